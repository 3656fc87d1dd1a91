"""Every tf_cnn_benchmarks flag is known to `python -m towertrain`: table-driven
over towertrain.config.tfcnn_flags (the complete list, read from
tensorflow/benchmarks at the commit it records).

Parse-level and in-process (the CLI's own parser and main, nothing trained),
plus one subprocess for the real exit status."""
import os

import pytest

from towertrain.commands import migration_doc
from towertrain.config import tfcnn_flags as table
import helpers.cli

DOC = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))), "docs", "migration.md")


@pytest.fixture
def cli(capsys):
    """parse(*args) parses a command line as the CLI does; main() runs the
    CLI's main on it and returns (exit status, stderr). Undone after."""
    from absl import flags
    from towertrain.commands import train
    from towertrain.config import flags as flags_lib
    flags_lib.define_flags()

    class Cli:
        @staticmethod
        def parse(*args):
            flags.FLAGS.unparse_flags()
            return train.parse_flags(["towertrain", "--device=cpu", *args])

        @staticmethod
        def main():
            capsys.readouterr()
            status = train.main(["towertrain"])
            return status, capsys.readouterr().err
    yield Cli
    flags.FLAGS.unparse_flags()


def _ids(flags):
    return [f.name for f in flags]


def _sample(flag_value):
    """A command-line argument that sets the towertrain flag `flag_value`."""
    if flag_value.flag_type() == "bool":
        return f"--{flag_value.name}"
    choices = getattr(flag_value.parser, "enum_values", None)
    if choices:
        return f"--{flag_value.name}={choices[0]}"
    sample = {"int": "1", "float": "1.0"}.get(flag_value.flag_type(), "x")
    return f"--{flag_value.name}={sample}"


def _other(flag):
    """A value of category-2 `flag` other than the accepted one."""
    if flag.type == "boolean":
        return not flag.accepted
    if flag.type in ("integer", "float"):
        return flag.accepted + 1
    return "other"


def test_the_table_is_tf_cnn_benchmarks_complete_list():
    # 137 DEFINEs in benchmark_cnn.py + --ml_perf_compliance_logging (counted
    # at SOURCE_COMMIT with an AST walk; a count of 134 by eye misses some).
    assert len(table.FLAGS) == 138 == len(table.BY_NAME)
    assert len(table.SOURCE_COMMIT) == 40
    assert {f.category for f in table.FLAGS} == {1, 2, 3}
    assert [f.name for f in table.FLAGS] == sorted(table.BY_NAME)  # as the docs list them


@pytest.mark.parametrize("flag", table.category(table.IMPLEMENTED),
                         ids=_ids(table.category(table.IMPLEMENTED)))
def test_category_1_is_a_towertrain_flag(cli, flag):
    from absl import flags
    if flag.name in table.PENDING:
        pytest.skip(f"--{flag.name}: category 1, defined by another branch "
                    "(tfcnn_flags.PENDING); not yet a flag here")
    assert flag.name in flags.FLAGS, f"--{flag.name} is category 1 but not a flag"
    cli.parse(_sample(flags.FLAGS[flag.name]))
    assert flags.FLAGS[flag.name].present


@pytest.mark.parametrize("flag", table.category(table.ACCEPTED_VALUE),
                         ids=_ids(table.category(table.ACCEPTED_VALUE)))
def test_category_2_accepts_its_value_and_refuses_the_other(cli, flag):
    from towertrain.config import flags as flags_lib
    cli.parse(table.spelled(flag, flag.accepted))
    flags_lib.params_from_flags()  # accepted: no error
    cli.parse(table.spelled(flag, _other(flag)))
    status, err = cli.main()
    assert status == 2
    assert err == f"towertrain: error: {table.refusal(flag, _other(flag))}\n"


@pytest.mark.parametrize("flag", table.category(table.REFUSED),
                         ids=_ids(table.category(table.REFUSED)))
def test_category_3_is_refused_with_its_line(cli, flag):
    given = "--" + flag.name if flag.type == "boolean" else f"--{flag.name}=1"
    cli.parse(given)
    status, err = cli.main()
    assert status == 2
    assert err == f"towertrain: error: {table.refusal(flag)}\n"
    assert "; " in flag.why  # why it cannot apply; what to use instead


def test_a_refusal_exits_2_from_a_real_command_line():
    # One process (the others run main in-process): the exit status app.run gives.
    done = helpers.cli.run_cli("--device=cpu", "--hierarchical_copy", timeout=120)
    expected = table.refusal(table.BY_NAME["hierarchical_copy"])
    assert (done.returncode, done.stderr) == (2, f"towertrain: error: {expected}\n")


def test_flags_left_at_their_defaults_are_not_refused(cli):
    from towertrain.config import flags as flags_lib
    cli.parse("--model=trivial")
    flags_lib.params_from_flags()


def test_migration_doc_is_current_and_shows_each_refusal():
    with open(DOC, encoding="utf-8") as f:
        text = f.read()
    assert migration_doc.update(text) == text, (
        "docs/migration.md is stale: run python -m towertrain.commands.migration_doc "
        "docs/migration.md")
    for flag in table.FLAGS:
        assert f"| `--{flag.name}` |" in text
        if flag.category == table.REFUSED:
            assert f"`towertrain: error: {table.refusal(flag)}`" in text
        elif flag.category == table.ACCEPTED_VALUE:
            line = table.refusal(flag, migration_doc.example_value(flag))
            assert f"`towertrain: error: {line}`" in text


def test_a_typo_is_never_pointed_at_a_refused_flag(cli, capsys):
    with pytest.raises(SystemExit) as exit_:
        cli.parse("--hierarchical_cop")
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert err == ("towertrain: error: --hierarchical_cop: unknown flag; see --help for the "
                   "flags\n")


def test_enum_values_cover_every_implemented_enum_flag():
    enums = {f.name for f in table.category(table.IMPLEMENTED) if f.type == "enum"}
    assert set(table.ENUM_VALUES) == enums
    assert {name for name, _ in table.REFUSED_VALUES} <= enums


@pytest.mark.parametrize("name,given", [(n, v) for n, values in table.ENUM_VALUES.items()
                                        for v in values])
def test_every_tf_cnn_enum_value_parses_or_says_what_to_use(cli, capsys, name, given):
    """tf_cnn_benchmarks' own values: each is taken (and means the towertrain
    value of that name, in any case) or refused with its migration line."""
    from absl import flags
    why = table.value_refusal(name, given)
    if why is None:
        cli.parse(f"--{name}={given}")
        value = flags.FLAGS[name].value
        assert value in flags.FLAGS[name].parser.enum_values
        assert value.upper() == given.upper()
        return
    capsys.readouterr()
    with pytest.raises(SystemExit) as exit_:
        cli.parse(f"--{name}={given}")
    assert exit_.value.code == 2
    choices = ", ".join(flags.FLAGS[name].parser.enum_values)
    assert capsys.readouterr().err == (
        f"towertrain: error: --{name}={given}: must be one of {choices}; {why}\n")
    assert "use --variable_update=collective_all_reduce" in why


def test_upper_case_device_reaches_params_as_the_lower_case_value(cli):
    from towertrain.config import flags as flags_lib
    cli.parse("--device=CPU", "--local_parameter_device=CPU", "--model=trivial")
    params = flags_lib.params_from_flags()
    assert (params.device, params.local_parameter_device) == ("cpu", "cpu")
