"""A TensorBoard log backend for amago."""
