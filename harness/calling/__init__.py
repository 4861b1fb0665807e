"""Stage 3: send prompts to a backend: dispatch, retries, cache, cost, batch endpoints."""
