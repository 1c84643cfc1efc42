"""The GenEnv curriculum as pure functions: generator rewards, difficulty band, RWR weights, pools.

No Prefect, no torch: every formula here is unit-tested with exact values.
"""
