"""docs/flags.md is the generated flag reference, current and complete: every
command's own flags and every Params field that is a flag."""
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # tests/<wing>/this file


def test_flag_reference_is_current():
    done = subprocess.run([sys.executable, "-m", "towertrain.commands.flag_reference"], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    with open(os.path.join(ROOT, "docs", "flags.md"), encoding="utf-8") as f:
        assert f.read() == done.stdout, ("docs/flags.md is stale: run python -m "
                                         "towertrain.commands.flag_reference > docs/flags.md")


def test_flag_reference_documents_export_and_scaling_flags():
    """python -m towertrain.export and towertrain.scaling have sections listing
    each of their own flags."""
    from towertrain.commands import export, scaling
    with open(os.path.join(ROOT, "docs", "flags.md"), encoding="utf-8") as f:
        text = f.read()
    sections = {title: body for title, body in
                re.findall(r"^## (.+?)\n(.*?)(?=^## |\Z)", text, re.S | re.M)}
    for module, names in (("towertrain.export", export.FLAG_NAMES),
                          ("towertrain.scaling", scaling.OWN_FLAGS)):
        body = sections.get(f"`python -m {module}`")
        assert body is not None, f"docs/flags.md has no section for python -m {module}"
        for name in names:
            assert f"| `--{name}` |" in body, f"python -m {module}: --{name} not documented"


def test_flag_reference_lists_every_params_field_that_is_a_flag():
    from towertrain.commands import flag_reference
    from towertrain.config import flags
    from towertrain.config import params
    text = flag_reference.markdown()
    for name in params.Params.__dataclass_fields__:
        if name in flags.FLAGS:
            assert f"`--{name}`" in text, name


def test_the_api_reference_lists_every_params_field():
    """docs/api.md's table of Params' fields is the generator's output: each
    field with its type, default and help."""
    from towertrain.commands import params_doc
    from towertrain.config import params
    with open(os.path.join(ROOT, "docs", "api.md"), encoding="utf-8") as f:
        text = f.read()
    assert params_doc.update(text) == text, (
        "docs/api.md is stale: run python -m towertrain.commands.params_doc docs/api.md")
    for name, field in params.Params.__dataclass_fields__.items():
        assert f"| `{name}` |" in text and f"`{field.default!r}`" in text, name
