"""The GraphQL face of an item's timeline: ReviewItem.events and its types."""
