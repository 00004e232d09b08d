"""A user's module whose function registers a selection rule when called, not when the
module is imported: other processes that import it do not have the rule."""

from relayrl.sharing.selectors import SELECTORS


def register() -> None:
    SELECTORS.add("late-rule", SELECTORS["quantile"])
