"""The feed: the input a run trains on, its epochs and staging on the devices."""
