"""Checks of the recipe that span sections (sync batch norm and compact
transfer against the exchange, accumulation, the epoch length against
--data_dir); each section's own are beside it (towertrain.recipe.settings).
Every message starts with the flag at fault and names the flag it conflicts
with."""

def validate_recipe(p, fail):
    """fail(flag, value, message) raises ParamsError."""
    _validate_accumulation(p, fail)


def _validate_accumulation(p, fail):
    steps = p.gradient_accumulation_steps
    if steps < 1:
        fail("gradient_accumulation_steps", steps, "must be >= 1 (1: no accumulation)")
    if steps > 1 and p.variable_update == "independent":
        fail("gradient_accumulation_steps", steps, "conflicts with "
             "--variable_update=independent: towers there update on their own and "
             "exchange nothing; use replicated or parameter_server, or drop the flag")
