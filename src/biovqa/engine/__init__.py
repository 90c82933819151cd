"""Running models on a benchmark: backends, scheduling, the prediction store, run cards."""
