"""Whether every op a traced GPU step places on a GPU has a GPU kernel.

The suite's `tensorflow-cpu` registers no GPU kernels; the CUDA-built
`tensorflow` wheel does, even on a machine without a GPU, and lists them with
their type constraints. The two cannot share a venv, so the CUDA wheel lives
in one of its own (made by .ci/cuda_tf_venv, which .ci/run runs) and
dump_gpu_kernels.py, run by its Python, hands its GPU and DEFAULT kernels
over as JSON. Here, under the suite's TensorFlow, each op of a step's graph
gets its effective device (its own, else that of the function call, `If` or
`While` that runs it: a branch inherits its `If`'s device) and, where that is
a GPU, must match a kernel whose constraints admit its type attributes.
A function XLA compiles (jit_compile) runs as one XLA launch: its ops need
no TensorFlow kernel, and its body is not walked. An op with no device of
its own outside any call (a read placed with the variable it reads) is not
judged: traced here every variable lives on the CPU, so its GPU is unknown
(the GPU kernels of the variable ops admit every type the engine uses).

gpu_kernels() keeps the dump beside the venv (kernels-<version>.json), so
each test process after the first reads it instead of importing the wheel."""
import functools
import json
import os
import subprocess

import tensorflow as tf

VENV = os.environ.get("TOWERTRAIN_CUDA_TF",
                      os.path.expanduser("~/.cache/towertrain/cuda-tf"))
MAKE_COMMAND = "bash .ci/cuda_tf_venv"
DUMP = os.path.join(os.path.dirname(os.path.abspath(__file__)), "dump_gpu_kernels.py")
# A traced function graph's inputs: the runtime's _Arg nodes, not ops.
NOT_OPS = ("Placeholder",)


def venv_python():
    return os.path.join(VENV, "bin", "python")


def absent_reason():
    """Why the check cannot run here (None: it can)."""
    if os.path.exists(venv_python()):
        return None
    return (f"no CUDA-built TensorFlow at {VENV} (TOWERTRAIN_CUDA_TF): make it with "
            f"`{MAKE_COMMAND}`")


@functools.lru_cache(maxsize=None)
def gpu_kernels():
    """{op type: [{"device", "constraints": {attr: [dtype names]}, "label"}]}
    of the CUDA wheel's GPU and DEFAULT kernels; the wheel must be the suite's
    TensorFlow version, built with CUDA."""
    cache = os.path.join(VENV, f"kernels-{tf.__version__}.json")
    if os.path.exists(cache):
        with open(cache) as f:
            return json.load(f)["kernels"]
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", CUDA_VISIBLE_DEVICES="")
    out = subprocess.run([venv_python(), DUMP], env=env, capture_output=True, text=True,
                         check=True, timeout=300).stdout
    dump = json.loads(out)
    if dump["tensorflow"] != tf.__version__ or not dump["cuda"]:
        raise RuntimeError(f"{VENV} holds TensorFlow {dump['tensorflow']} (CUDA: "
                           f"{dump['cuda']}), the suite {tf.__version__}: remake it with "
                           f"`{MAKE_COMMAND}`")
    partial = f"{cache}.{os.getpid()}"
    with open(partial, "w") as f:
        f.write(out)
    os.replace(partial, cache)  # whole or absent for a process reading it
    return dump["kernels"]


def _device_type(device):
    return tf.DeviceSpec.from_string(device).device_type.upper() if device else None


def _called(node, library):
    """Names of the library functions `node` runs with TensorFlow's kernels
    (a call by function name, or its function-valued attributes: branches,
    bodies, called functions); none where XLA compiles the call."""
    if "_XlaMustCompile" in node.attr and node.attr["_XlaMustCompile"].b:
        return
    if node.op in library:
        yield node.op
    for value in node.attr.values():
        if value.HasField("func") and value.func.name in library:
            yield value.func.name
        for fn in value.list.func:
            if fn.name in library:
                yield fn.name


def placed_nodes(graph_def):
    """(node, where: the function path, effective device type or None) of
    every op of the step, nested functions included, each call's body
    walked with its caller's device."""
    library = {f.signature.name: f for f in graph_def.library.function}
    found, seen = [], set()

    def visit(nodes, where, inherited):
        for node in nodes:
            device = _device_type(node.device) or inherited
            found.append((node, where, device))
            for name in _called(node, library):
                if (name, device) not in seen:
                    seen.add((name, device))
                    visit(library[name].node_def, f"{where}/{name}", device)
    visit(graph_def.node, "", None)
    return found


def _type_attrs(node):
    """{attr: [dtype names]} of the node's type and type-list attributes."""
    out = {}
    for name, value in node.attr.items():
        if value.WhichOneof("value") == "type":
            out[name] = [tf.dtypes.as_dtype(value.type).name]
        elif value.WhichOneof("value") == "list" and value.list.type:
            out[name] = [tf.dtypes.as_dtype(t).name for t in value.list.type]
    return out


def has_gpu_kernel(node, kernels):
    """A GPU or DEFAULT kernel of the node's op admits its type attributes
    (and label, where the node asks for one)."""
    attrs, label = _type_attrs(node), (node.attr["_kernel"].s.decode()
                                      if "_kernel" in node.attr else "")
    for kernel in kernels.get(node.op, ()):
        if kernel["label"] != label:
            continue
        if all(name in attrs and set(attrs[name]) <= set(allowed)
               for name, allowed in kernel["constraints"].items()):
            return True
    return False


def describe(node, where):
    types = ", ".join(f"{k}={'/'.join(v)}" for k, v in sorted(_type_attrs(node).items()))
    return f"{node.op}({types}) {node.name!r} in {where or 'the step'}"


def missing(graph_def, kernels):
    """What the step places on a GPU without a kernel for it there."""
    library = {f.signature.name for f in graph_def.library.function}
    return sorted({describe(node, where) for node, where, device in placed_nodes(graph_def)
                   if device == "GPU" and node.op not in NOT_OPS and node.op not in library
                   and not has_gpu_kernel(node, kernels)})
