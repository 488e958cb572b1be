"""kube-scheduler's Filter phase, modelled plugin by plugin (see framework.py)."""
