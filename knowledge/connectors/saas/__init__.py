"""Connector kinds for hosted sources (GitHub, Slack) and the REST client they share."""
