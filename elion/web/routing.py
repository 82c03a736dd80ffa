from django.urls import path

from conversations.web.messages.consumers import ConversationConsumer

websocket_urlpatterns = [
    path("ws/conversations/<str:conversation_id>/", ConversationConsumer.as_asgi()),
]
