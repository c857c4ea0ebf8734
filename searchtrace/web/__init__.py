"""The evidence explorer (`searchtrace view`): a local web app over the store, SPEC §16."""
