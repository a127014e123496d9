"""JAX frontend: trace an entry to a jaxpr (``trace``) and lower it to the IR (``lower``)."""
