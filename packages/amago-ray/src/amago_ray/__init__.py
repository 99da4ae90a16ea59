"""Train collection on Ray actors (``ray.actors > 0``), a collector backend on amago-core's public
``amago.collectors`` entry-point group."""
