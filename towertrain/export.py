"""`python -m towertrain.export`: starts the command in towertrain.commands.export.

Importing this module does nothing; the engine never imports a command.
"""
if __name__ == "__main__":
    from towertrain.commands.export import run
    run()
