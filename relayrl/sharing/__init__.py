"""Experience sharing: selection at the sender x correction at the receiver."""

from relayrl.sharing.relay import Relay, RelayStats
from relayrl.sharing.selectors import SELECTORS, Selector, make_selector

__all__ = ["SELECTORS", "Relay", "RelayStats", "Selector", "make_selector"]
