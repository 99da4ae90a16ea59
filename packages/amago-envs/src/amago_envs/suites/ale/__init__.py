"""The ``ale`` env suite: Atari games (ale-py) with unclipped rewards, one game or a multi-game mix."""
