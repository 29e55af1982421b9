"""thaw's discrete-event model of a serverless LLM inference cluster (SimPy)."""
