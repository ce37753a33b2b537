"""Estimator: kernel-time estimates from real GPU profiles (profiler, CatBoost models, roofline, collectives)."""
