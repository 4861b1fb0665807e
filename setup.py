"""Packaging beyond pyproject.toml: the top-level `templates/` folder ships in the wheel as `harness/templates`.

pyproject.toml's `packages.find` only finds folders under `harness/`; a folder elsewhere needs its place named in
`package_dir`, which the find directive cannot extend. `harness/prompting/render.py` looks for the installed
folder first, then the checkout's.
"""

from setuptools import find_namespace_packages, setup

setup(
    # Namespace packages too: the data folders (harness/data, harness/recipes, ...) have no __init__.py, and setuptools
    # warns of a folder it ships as package data without its package being named.
    packages=[
        *find_namespace_packages(include=["harness", "harness.*"]),
        "harness.templates",
        *(f"harness.templates.{name}" for name in find_namespace_packages(where="templates")),
    ],
    package_dir={"harness.templates": "templates"},
)
