"""The checker's engine: the runner, the facts cache, the context of a run, suppressions, the baseline and policy comparison."""
