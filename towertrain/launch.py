"""`python -m towertrain.launch`: starts the command in towertrain.commands.launch.

Importing this module does nothing; the engine never imports a command.
"""
if __name__ == "__main__":
    from towertrain.commands.launch import run
    run()
