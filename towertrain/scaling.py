"""`python -m towertrain.scaling`: starts the command in towertrain.commands.scaling.

Importing this module does nothing; the engine never imports a command.
"""
if __name__ == "__main__":
    from towertrain.commands.scaling import run
    run()
