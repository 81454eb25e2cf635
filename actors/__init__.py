"""Who computes: model resolution, inference engines and the Ray Data stages that use them."""
