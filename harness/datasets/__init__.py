"""Stage 1: read C-STS and STS-B (the encrypted release, re-annotated labels) and describe them."""
