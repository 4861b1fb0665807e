"""The prompting variants' own paths (the paper's sentences prompt; Tu et al.'s QA answers)."""
