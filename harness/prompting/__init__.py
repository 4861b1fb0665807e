"""Stage 2: pick in-context shots and render prompts from templates; count their tokens."""
