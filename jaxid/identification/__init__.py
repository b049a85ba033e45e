"""Identification: regressor, base parameters, estimators, friction, payload."""
