"""Built-in generated runs for `tracewh demo` and the tests."""
