"""The gradient-exchange flags (--all_reduce_spec, --gradient_repacking,
--gradient_pack_mb):
every refused combination names the flag and what to use instead, through
Params (the library entry point) and the command line (exit 2)."""
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
     r"scatter/xring, collective$"),
    ({"variable_update": "parameter_server", "all_reduce_spec": "nccl/xring"},
     r"^--all_reduce_spec=nccl/xring: only applies to --variable_update=replicated or "
     r"--variable_update=collective_all_reduce \(got --variable_update=parameter_server\)$"),
    ({"variable_update": "collective_all_reduce", "all_reduce_spec": "nccl/xring"},
     r"^--all_reduce_spec=nccl/xring: needs --device=gpu; on CPU devices use pscpu/xring, "
     r"scatter/xring or collective$"),
    ({"variable_update": "collective_all_reduce", "all_reduce_spec": "psgpu/xring"},
     r"^--all_reduce_spec=psgpu/xring: needs --device=gpu"),
    ({"variable_update": "collective_all_reduce", "all_reduce_spec": "xring"},
     r"^--all_reduce_spec=xring: must be one of"),
    ({"variable_update": "replicated", "gradient_pack_mb": -0.5},
     r"^--gradient_pack_mb=-0.5: must be a number >= 0 \(0: one pack per dtype\)$"),
    ({"variable_update": "replicated", "gradient_pack_mb": 25.0, "gradient_repacking": 4},
     r"^--gradient_pack_mb=25.0: conflicts with --gradient_repacking=4: packs are sized in "
     r"bytes or counted, not both; drop one$"),
    ({"variable_update": "collective_all_reduce", "gradient_repacking": 4, "xla_compile": True},
     r"^--gradient_repacking=4: conflicts with --xla_compile: a compiled tower hands out all "
     r"its gradients at once, so no pack could start before the whole backward pass ends"),
    ({"variable_update": "replicated", "gradient_pack_mb": 25.0, "xla_compile": True},
     r"^--gradient_pack_mb=25.0: conflicts with --xla_compile: a compiled tower"),
    ({"variable_update": "independent", "gradient_pack_mb": 25.0},
     r"^--gradient_pack_mb=25.0: only applies to --variable_update=replicated or "),
])
def test_refused_combinations_name_the_flags(changes, message):
    with pytest.raises(ParamsError, match=message):
        Params(device="cpu", **changes)


@pytest.mark.parametrize("device,changes,message", [
    ("cpu", {}, r"^--collective_implementation=nccl: needs --device=gpu \(NCCL runs between "
     r"GPUs\); on CPU devices use ring or auto$"),
    ("gpu", {"all_reduce_spec": "pscpu/xring"},
     r"^--collective_implementation=nccl: needs a GPU to cross workers, and "
     r"--all_reduce_spec=pscpu/xring crosses from /cpu:0; use nccl/xring, psgpu/xring, "
     r"scatter/xring or collective$"),
])
def test_nccl_is_refused_where_it_cannot_run(device, changes, message):
    with pytest.raises(ParamsError, match=message):
        Params(device=device, variable_update="collective_all_reduce",
               collective_implementation="nccl", **changes)
    Params(device="gpu", variable_update="collective_all_reduce",
           collective_implementation="nccl")  # scatter/xring, the GPU default


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
                  ).resolved_all_reduce_spec == "collective"
    assert Params(device="gpu", variable_update="replicated").resolved_all_reduce_spec == "nccl"
    assert Params(device="gpu").resolved_all_reduce_spec is None  # parameter_server
    for spec in ("psgpu/xring", "nccl/xring", "scatter/xring"):
        Params(device="gpu", variable_update="collective_all_reduce", all_reduce_spec=spec,
               gradient_repacking=16)


@pytest.mark.parametrize("device,changes,pack_bytes", [
    # --device=gpu overlaps by default: packs of 25 MB, in both exchanging modes.
    ("gpu", {"variable_update": "replicated"}, 25 * 10**6),
    ("gpu", {"variable_update": "collective_all_reduce"}, 25 * 10**6),
    # CPU devices keep one pack per dtype; counted packs, 0 and XLA take no size.
    ("cpu", {"variable_update": "replicated"}, None),
    ("cpu", {"variable_update": "collective_all_reduce"}, None),
    ("gpu", {"variable_update": "replicated", "gradient_repacking": 4}, None),
    ("gpu", {"variable_update": "replicated", "gradient_pack_mb": 0.0}, None),
    ("gpu", {"variable_update": "replicated", "xla_compile": True}, None),
    ("gpu", {"variable_update": "replicated", "xla_compile": True, "gradient_pack_mb": 0.0},
     None),
    ("cpu", {"variable_update": "replicated", "gradient_pack_mb": 0.000145}, 145),
    ("gpu", {"variable_update": "replicated", "gradient_pack_mb": 64.0}, 64 * 10**6),
    ("gpu", {"variable_update": "independent"}, None)])
def test_the_plan_sizes_packs_by_default_on_gpus_only(device, changes, pack_bytes):
    from towertrain import plan
    params = Params(model="trivial", device=device, **changes)
    assert plan.lay_out(params).exchange.gradient_pack_bytes == pack_bytes


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


def test_header_prints_packs_sized_in_bytes():
    done = helpers.cli.run_cli("--model=trivial", "--device=cpu", "--num_gpus=2",
                               "--variable_update=collective_all_reduce",
                               "--gradient_pack_mb=0.005", "--num_batches=1",
                               "--num_warmup_batches=0", timeout=180, check=True)
    # trivial: 3093 float32 values = 12,372 B in ceil(12372 / 5000) = 3 packs.
    assert ("Gradient packs: 3 packs (of at most 5.0 KB, reverse layer order): float32 "
            "4.1 KB, 4.1 KB, 4.1 KB") in done.stdout, done.stdout[-2000:]


@pytest.mark.parametrize("changes,wire", [
    ({"variable_update": "replicated", "num_gpus": 2}, None),
    ({"variable_update": "replicated", "num_gpus": 2, "compact_gradient_transfer": True},
     "float16"),
    ({"variable_update": "replicated", "num_gpus": 2, "compact_gradient_transfer": True,
      "compact_transfer_dtype": "bfloat16"}, "bfloat16"),
    # One tower of one process: replicated sums nothing, so casts nothing...
    ({"variable_update": "replicated", "num_gpus": 1, "compact_gradient_transfer": True},
     None),
    # ... while collective_all_reduce casts its packs on any topology.
    ({"variable_update": "collective_all_reduce", "num_gpus": 1,
      "compact_gradient_transfer": True}, "float16")])
def test_the_header_sizes_packs_in_the_dtype_on_the_wire(changes, wire):
    from towertrain import plan
    from towertrain.engine.run import header
    params = Params(model="trivial", device="cpu", **changes)
    assert header.wire_dtype(plan.lay_out(params)) == wire
