"""Built-in training schemes over rounds (paper 004, section 4.4): a small file each."""
