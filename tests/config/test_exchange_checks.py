"""The gradient-exchange flags (--all_reduce_spec, --gradient_repacking):
every refused combination names the flag and what to use instead, through
Params (the library door) and the command line (exit 2)."""
import pytest

from towertrain import Params, ParamsError

import helpers.cli


@pytest.mark.parametrize("changes,message", [
    ({"gradient_repacking": -1, "variable_update": "replicated"}, r"^--gradient_repacking=-1: must be in 0\.\.1000 "
     r"\(0: one pack per dtype\)$"),
    ({"gradient_repacking": 1001, "variable_update": "replicated"}, r"^--gradient_repacking=1001: must be in 0\.\.1000"),
    ({"gradient_repacking": 4, "variable_update": "parameter_server"},
     r"^--gradient_repacking=4: only applies to --variable_update=replicated or "
     r"--variable_update=collective_all_reduce \(got --variable_update=parameter_server\)$"),
    ({"gradient_repacking": 4, "variable_update": "independent"},
     r"^--gradient_repacking=4: .*\(got --variable_update=independent\)$"),
    ({"variable_update": "replicated", "all_reduce_spec": "pscpu/xring"},
     r"^--all_reduce_spec=pscpu/xring: is a --variable_update=collective_all_reduce "
     r"exchange; with --variable_update=replicated use nccl, pscpu, psgpu, ring$"),
    ({"variable_update": "replicated", "all_reduce_spec": "collective"},
     r"^--all_reduce_spec=collective: is a --variable_update=collective_all_reduce"),
    ({"variable_update": "collective_all_reduce", "all_reduce_spec": "ring"},
     r"^--all_reduce_spec=ring: is a --variable_update=replicated algorithm; with "
     r"--variable_update=collective_all_reduce use pscpu/xring, psgpu/xring, nccl/xring, "
     r"collective$"),
    ({"variable_update": "parameter_server", "all_reduce_spec": "nccl/xring"},
     r"^--all_reduce_spec=nccl/xring: only applies to --variable_update=replicated or "
     r"--variable_update=collective_all_reduce \(got --variable_update=parameter_server\)$"),
    ({"variable_update": "collective_all_reduce", "all_reduce_spec": "nccl/xring"},
     r"^--all_reduce_spec=nccl/xring: needs --device=gpu; on CPU devices use pscpu/xring "
     r"or collective$"),
    ({"variable_update": "collective_all_reduce", "all_reduce_spec": "psgpu/xring"},
     r"^--all_reduce_spec=psgpu/xring: needs --device=gpu"),
    ({"variable_update": "collective_all_reduce", "all_reduce_spec": "xring"},
     r"^--all_reduce_spec=xring: must be one of"),
])
def test_refused_combinations_name_the_flags(changes, message):
    with pytest.raises(ParamsError, match=message):
        Params(device="cpu", **changes)


@pytest.mark.parametrize("device,changes,message", [
    ("cpu", {}, r"^--collective_implementation=nccl: needs --device=gpu \(NCCL runs between "
     r"GPUs\); on CPU devices use ring or auto$"),
    ("gpu", {"all_reduce_spec": "pscpu/xring"},
     r"^--collective_implementation=nccl: needs a GPU to cross workers, and "
     r"--all_reduce_spec=pscpu/xring crosses from /cpu:0; use nccl/xring, psgpu/xring or "
     r"collective$"),
])
def test_nccl_is_refused_where_it_cannot_run(device, changes, message):
    with pytest.raises(ParamsError, match=message):
        Params(device=device, variable_update="collective_all_reduce",
               collective_implementation="nccl", **changes)
    Params(device="gpu", variable_update="collective_all_reduce",
           collective_implementation="nccl")  # nccl/xring, the GPU default


def test_collective_implementation_belongs_to_collective_all_reduce():
    with pytest.raises(ParamsError, match=r"^--collective_implementation=ring: only applies to "
                       r"--variable_update=collective_all_reduce \(got --variable_update="
                       r"replicated\)$"):
        Params(device="cpu", variable_update="replicated", collective_implementation="ring")
    with pytest.raises(ParamsError, match=r"^--collective_implementation=mpi: must be one of "
                       r"auto, ring, nccl$"):
        Params(device="cpu", variable_update="collective_all_reduce",
               collective_implementation="mpi")


def test_defaults_and_accepted_specs():
    assert Params(device="cpu", variable_update="collective_all_reduce"
                  ).resolved_all_reduce_spec == "pscpu/xring"
    assert Params(device="gpu", variable_update="collective_all_reduce"
                  ).resolved_all_reduce_spec == "nccl/xring"
    assert Params(device="gpu", variable_update="replicated").resolved_all_reduce_spec == "nccl"
    assert Params(device="gpu").resolved_all_reduce_spec is None  # parameter_server
    for spec in ("psgpu/xring", "nccl/xring", "collective"):
        Params(device="gpu", variable_update="collective_all_reduce", all_reduce_spec=spec,
               gradient_repacking=16)


def test_command_line_refuses_with_exit_2():
    done = helpers.cli.run_cli("--model=trivial", "--device=cpu",
                               "--variable_update=replicated", "--gradient_repacking=-2",
                               timeout=120)
    assert done.returncode == 2
    assert "--gradient_repacking=-2: must be in 0..1000" in done.stderr, done.stderr[-2000:]


def test_header_prints_the_exchange_and_its_packs():
    done = helpers.cli.run_cli("--model=trivial", "--device=cpu", "--num_gpus=2",
                               "--variable_update=replicated", "--all_reduce_spec=ring",
                               "--gradient_repacking=4", "--num_batches=1",
                               "--num_warmup_batches=0", timeout=180, check=True)
    # trivial: 3072 x 1 + 1 + 1 x 10 + 10 = 3093 float32 values in 4 packs.
    assert "AllReduce:   ring" in done.stdout, done.stdout[-2000:]
    assert ("Gradient packs: 4 packs (per dtype, reverse layer order): float32 3.1 KB, "
            "3.1 KB, 3.1 KB, 3.1 KB") in done.stdout, done.stdout[-2000:]
