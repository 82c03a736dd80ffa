// Generated images while a reply streams. chat.js passes each `image` event of the live reply on as an
// `elion:image` event: "generating", then partial previews (Responses API; shown, never stored), then
// "done" with the stored attachment, or "error". The server's rendering of the finished reply
// (chat/_generated_images.html) replaces all of this when the reply ends.

const conversationId = document.querySelector("[data-chat]")?.dataset.conversationId;

function tray(bubble) {
  let box = bubble.querySelector("[data-generated-images]");
  if (!box) {
    box = document.createElement("div");
    box.className = "generated-images";
    box.dataset.generatedImages = "";
    const body = bubble.querySelector(".message-body");
    if (body) body.before(box);
    else bubble.append(box);
  }
  return box;
}

function figureFor(box, key) {
  for (const figure of box.querySelectorAll("[data-image-key]")) {
    if (figure.dataset.imageKey === key) return figure;
  }
  const figure = document.createElement("figure");
  figure.className = "generated-image";
  figure.dataset.imageKey = key;
  figure.dataset.liveImage = "";
  const img = document.createElement("img");
  img.alt = "Image being generated";
  img.hidden = true;
  const caption = document.createElement("figcaption");
  figure.append(img, caption);
  box.append(figure);
  return figure;
}

export function showImageEvent(bubble, data) {
  const figure = figureFor(tray(bubble), String(data.item_id || data.call_id || "image"));
  const img = figure.querySelector("img");
  const caption = figure.querySelector("figcaption");
  figure.dataset.state = data.status;
  if (data.status === "generating") {
    caption.textContent = "Creating an image…";
  } else if (data.status === "partial") {
    if (data.b64) {
      img.src = `data:image/png;base64,${data.b64}`;
      img.hidden = false;
    }
    caption.textContent = "Creating an image… (preview)";
  } else if (data.status === "done") {
    img.src = `/api/conversations/${conversationId}/attachments/${data.attachment_id}/`;
    img.alt = "Image generated in this reply";
    img.hidden = false;
    caption.textContent = "Generated image";
  } else if (data.status === "error") {
    img.remove();
    figure.classList.add("generated-image-error");
    figure.setAttribute("role", "alert");
    caption.textContent = `Image not made: ${data.detail || "the image could not be generated."}`;
  }
}

document.addEventListener("elion:image", (event) => {
  const { messageId, data } = event.detail || {};
  const bubble = messageId && document.getElementById(`message-${messageId}`);
  if (bubble && data) showImageEvent(bubble, data);
});
