"""Packaging beyond pyproject.toml: the top-level `templates/` folder ships in the wheel as `harness/templates`.

pyproject.toml's `packages.find` only finds folders under `harness/`; a folder elsewhere needs its place named in
`package_dir`, which the find directive cannot extend. `harness/prompting/render.py` looks for the installed
folder first, then the checkout's.
"""

from setuptools import find_packages, setup

setup(
    packages=[*find_packages(include=["harness", "harness.*"]), "harness.templates"],
    package_dir={"harness.templates": "templates"},
)
