"""What the tests and the benches both use to set up real conditions: the app as a running server, media made
at run time, decoded audio. Tests and benches import it; it imports neither."""
