"""Packaging for towertrain.

`models/` and `input_pipeline/` install as `towertrain.models` and
`towertrain.input_pipeline` (package_dir below) so no generic top-level package
lands in a user's site-packages. This mapping, and BUILD's copy rules under
Bazel, are the only ones: towertrain/__init__.py does not look for them, so a
checkout runs installed (`pip install -e .`, the README's first command).
"""
from setuptools import find_packages, setup

# What `mkdocs build --strict` needs for mkdocs.yml: the Material theme and
# the API reference generated from docstrings.
DOCS = ["mkdocs>=1.6", "mkdocs-material>=9.5", "mkdocstrings[python]>=0.26"]

setup(
    name="towertrain",
    version="0.1.0",
    description="Data-parallel tower trainer for TensorFlow 2 with Keras-defined models",
    long_description=open("README.md", encoding="utf-8").read(),
    long_description_content_type="text/markdown",
    python_requires=">=3.10",
    # Every package under towertrain/ (its wings), found rather than listed: a
    # hand-written list once left towertrain.callbacks out of the wheel.
    packages=(["towertrain"]
              + [f"towertrain.{name}" for name in find_packages("towertrain")]
              + ["towertrain.models", "towertrain.input_pipeline"]),
    package_dir={
        "towertrain": "towertrain",
        "towertrain.models": "models",
        "towertrain.input_pipeline": "input_pipeline",
    },
    # TensorFlow itself comes from an extra: `cpu` (tensorflow-cpu) or `gpu`
    # (tensorflow with CUDA); installing both would clobber one another.
    install_requires=["keras>=3.10", "numpy", "absl-py"],
    extras_require={
        "cpu": ["tensorflow-cpu==2.21.0"],
        "gpu": ["tensorflow[and-cuda]==2.21.0"],
        # The suite runs on 2 workers, and builds the documentation site
        # (tests/commands/test_docs_site.py), so the test extra carries the
        # docs extra's packages.
        "test": ["pytest", "pytest-xdist", *DOCS],
        "docs": DOCS,  # mkdocs build / mkdocs serve (mkdocs.yml)
        "plot": ["matplotlib"],  # the PNG of python -m towertrain.scaling
        "mutation": ["cosmic-ray"],  # mutation/generated_mutants.py (not the suite)
    },
    entry_points={"console_scripts": ["towertrain=towertrain.commands.train:run"]},
)
