"""amago-plugin-lstm: an LSTM trajectory encoder, registered as ``lstm`` in ``amago.traj_encoders``."""

__version__ = "0.1.0"
