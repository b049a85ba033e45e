"""jaxid: differentiable robot-dynamics identification in JAX.

Importing the package enables float64 (``jax_enable_x64``): identification is
ill-conditioned by nature and float32 loses the small base parameters.
"""
import jax

jax.config.update("jax_enable_x64", True)
