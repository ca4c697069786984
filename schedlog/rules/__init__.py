"""The pure rules layer: instants, zones, `at` input, rule arithmetic and cron (SPEC §2–§8).

Nothing here reads the wall clock or does I/O beyond loading the bundled zone data.
"""
