"""Node-side DRA state (the kubelet's checkpoint, CDI specs, PodResources) and how it is compared
with what the API says. Parsing and comparison only: the agent does the reading."""
