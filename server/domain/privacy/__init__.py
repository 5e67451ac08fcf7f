"""Personal data (docs/privacy.md): a payload policy per queue, fields encrypted per subject,
salted per-field evidence digests, reveals logged before they are answered, retention, holds
and erasure that leaves decisions verifiable."""
