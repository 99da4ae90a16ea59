"""amago's built-in, numpy-only env suites: T-Maze, Meta-Frozen-Lake, Dark Key-To-Door and MazeRunner.

``specs`` describes each suite without importing gymnasium (it is what ``amago list envs`` loads); the
suite modules hold the gymnasium environments and are imported only when an env is built. This package
file imports nothing so that loading ``specs`` stays cheap.
"""
