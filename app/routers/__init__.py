"""HTTP routers, one module per API family; each maps requests onto the model layer."""
