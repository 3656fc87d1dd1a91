from towertrain.commands.train import run

run()
