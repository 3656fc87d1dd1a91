from towertrain.cli import run

run()
