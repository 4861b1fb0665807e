"""C-STS / STS-B evaluation of language models by prompting."""

__version__ = "0.1.0"
