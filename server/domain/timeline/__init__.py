"""An item's story: the kinds of event its timeline shows, and the notes people write in it."""
