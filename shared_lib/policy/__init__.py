"""The deciding half of the charter: guardian rules and the authorization gate."""
