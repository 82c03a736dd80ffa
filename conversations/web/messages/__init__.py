"""Messages: sending, retrying, watching and stopping a reply (HTTP and the WebSocket), the
message list, and one message rendered for the chat page.
"""
