"""The plan's tests run where TensorFlow and Keras are never imported: the
plan, config/ and the model catalog are pure Python (towertrain.plan)."""
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))

# pytest without the suite's conftest (it configures TensorFlow's devices);
# after the run, TensorFlow and Keras must still be absent from the process.
RUN = """
import sys, time, pytest
started = time.perf_counter()
code = pytest.main(["-q", "-p", "no:cacheprovider", "--noconftest", sys.argv[1]])
loaded = sorted(m for m in ("tensorflow", "keras") if m in sys.modules)
print(f"LOADED {loaded} in {time.perf_counter() - started:.1f} s")
sys.exit(code or (3 if loaded else 0))
"""


def test_plan_tests_pass_in_a_process_without_tensorflow():
    done = subprocess.run([sys.executable, "-c", RUN, os.path.join(HERE, "test_plan.py")],
                          capture_output=True, text=True, timeout=300, cwd=ROOT,
                          env=dict(os.environ, PYTHONPATH=os.pathsep.join(
                              [os.path.join(ROOT, "tests")] + [
                                  p for p in [os.environ.get("PYTHONPATH")] if p])))
    output = done.stdout + done.stderr
    assert "LOADED [] in" in output, output[-3000:]
    assert done.returncode == 0, output[-3000:]
