"""Built-in checks: rules with positions, severities, waivers, and their CI formats.

- registry.py: every rule (id, rationale, default severity, stage) and the schema of the
  `checks:` blocks, generated from it;
- settings.py: what the manifest's `checks:` block and waivers make of each rule;
- findings.py: what a rule found, where, and whether a waiver silences it;
- static.py: the rules `validate` runs on the manifest alone;
- sarif.py: findings as SARIF 2.1.0, for code-scanning annotations.
"""
