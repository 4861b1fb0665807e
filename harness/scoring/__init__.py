"""Stage 4: read a score from each reply (the paper's rule) and compute metrics and statistics."""
