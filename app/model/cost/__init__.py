"""Cost and prediction: hardware and model presets, a step's cost, the regimes over batch size, capacity, and the
fit to published measurements that states how far a prediction holds."""
