"""Reading and watching live engines: the analysis of measurement sweeps, the step-time fit, the watch, the
rollout check and plan, the dashboard and the engine's config for a schedule."""
