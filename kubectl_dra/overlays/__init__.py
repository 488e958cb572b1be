"""Karpenter NodeOverlays: which apply where, and the prices, capacity and (proposed) slices that result."""
