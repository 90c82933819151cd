"""C3 prompts (the paper's Table 70) and the answer vocabularies they offer.

A prompt is the frame (if any) and the question, stored in an item's ``question`` joined by a
newline (:func:`prompt`); the answer-format instruction of each task (``INSTRUCTION_*``, held by the
task's spec record in :mod:`.tasks`) is stored in ``instruction`` and appended by the engine.
"""

from __future__ import annotations

COUNTING_TIERS = ("easy", "medium", "hard")
RELATIVE_COUNTING_CONDITIONS = ("same", "different")
VIEWPOINT_TIERS = ("red_box", "species", "three_panel")
LETTERS = ("A", "B", "C", "D")
PANEL_POSITIONS = {"A": "top-left", "B": "top-right", "C": "bottom-left", "D": "bottom-right"}
#: Eight directions, clockwise from "top" (0°), 45° apart (paper Sec. C.6, relative position).
DIRECTIONS: tuple[str, ...] = ("top", "top-right", "right", "bottom-right", "bottom", "bottom-left",
                               "left", "top-left")
#: Ten viewpoint labels (paper Sec. G.3); ring bearings in degrees (up/down are off the ring).
VIEWPOINTS: tuple[str, ...] = ("front", "back", "left", "right", "frontleft", "frontright", "backleft",
                               "backright", "up", "down")
VIEWPOINT_BEARING: dict[str, int] = {"front": 0, "frontright": 45, "right": 90, "backright": 135,
                                     "back": 180, "backleft": 225, "left": 270, "frontleft": 315}
BEETLE_COLOURS = {"A": "red", "B": "blue", "C": "green", "D": "white"}

# ------------------------------------------------------------------ frames and questions

FRAME_TWO_PANEL = ("This image consists of two separate photographs placed side by side. Count only "
                   "within the photograph named in the question and ignore the other one.")
FRAME_GRID = ("This image is a 2x2 grid of four separate photographs: Image A - top-left, Image B - "
              "top-right, Image C - bottom-left, Image D - bottom-right.")
FRAME_ABSOLUTE = ("This image shows a plate of pinned beetle specimens, photographed at a single scale. "
                  "A BLUE line marks the scale bar. The scale bar is exactly 1 cm long. A RED line marks "
                  "the measurement asked about below.")
FRAME_RELATIVE = ("This image shows a single plate of pinned beetle specimens, photographed at one "
                  "magnification. Four specimens are marked, each with a dotted box and a coloured line "
                  "drawn along its elytra: Beetle A - red, Beetle B - blue, Beetle C - green, Beetle D - white.")
FRAME_LOCALIZATION = "The whole image is {W} pixels wide and {H} pixels tall."
FRAME_THREE_PANEL = "This image consists of three separate photographs placed side by side."
FRAME_OCR = "This image shows a specimen label with a barcode and a printed accession code beneath it."

Q_COUNT = "How many {animals} are there in this image?"
Q_COUNT_PANEL = "How many {animals} are there in the {side} photograph?"
Q_RELATIVE_COUNT = ("Which of these 4 images contains {extreme} number of {animals}: Image A (top-left), "
                    "Image B (top-right), Image C (bottom-left), Image D (bottom-right)?")
Q_ABSOLUTE = ("What is the measurement of the elytra {measure} (marked with red line with white border) "
              "with respect to the scalebar (marked with blue line with green border) in cm?")
Q_RELATIVE = ("Among the four highlighted beetle specimens, which one has the largest elytral {measure}? "
              "Beetle A (red dotted box/line), Beetle B (blue dotted box/line), Beetle C (green dotted "
              "box/line), and Beetle D (white dotted box/line)")
Q_LOCALIZATION = "Provide bounding box coordinates for the subject animal ({species}) in this image."
Q_POSITION = ("This image is marked with six boxes: two red, two blue, one green and one cyan. Exactly one "
              "red box and exactly one blue box contain a specimen; the other red box and the other blue "
              "box are empty. The green and cyan boxes are irrelevant to the question. Where is the "
              "specimen inside the red box located with respect to the specimen inside the blue box? "
              "Options: {options}")
Q_VIEW_RED = "What is the viewpoint of the animal (red bounding box) shown in this image?"
Q_VIEW_SPECIES = "What is the viewpoint of the {species} in this image?"
Q_VIEW_PANEL = "What is the viewpoint of the {species} marked in the {side} bounding box?"
Q_OCR = "What is the text under the barcode (starting with A0...) shown in this image?"

# ------------------------------------------------------------------ answer-format instructions

INSTRUCTION_COUNTING = (
    "Count every individual, including any that are partially visible or cut off at the edge of "
    "the photograph. Give a single best estimate even if you are uncertain. Respond with one "
    "integer and nothing else: no words, no units, no ranges. If you count seven, respond: 7")
INSTRUCTION_RELATIVE_COUNTING = (
    "Count the animals in each of the four photographs and compare the totals. The photographs "
    "are shown at different scales, so compare how many animals there are, not how large they "
    "appear. Exactly one photograph is the answer. Choose it even if the difference is small. "
    "Answer immediately with the letter. Do not describe the photographs and do not explain your "
    "reasoning. Respond with one letter and nothing else: A, B, C or D.")
INSTRUCTION_ABSOLUTE_DISTANCE = (
    "Compare the pixel length of the red line to the pixel length of the blue scale bar. Because "
    "the scale bar is exactly 1 cm long, the red line's length in centimetres equals that ratio: "
    "if the red line is half as long as the blue line the answer is 0.50 cm, and if it is twice "
    "as long the answer is 2.00 cm. Measure the two lines as they appear in this image. Do not "
    "answer from what you know about typical beetle sizes. Respond with one number rounded to two "
    "decimal places followed by cm, and nothing else. No explanation, no range, no other units. "
    "Example: 0.87 cm")
INSTRUCTION_RELATIVE_DISTANCE = (
    "Compare the lengths of the four coloured lines as they appear in this image. Because all "
    "four specimens are in the same photograph at the same magnification, the line drawn on "
    "screen is directly proportional to the real measurement - no scale conversion is needed. "
    "Exactly one of the four is the largest. Choose it even if the difference is small. Respond "
    "with one letter and nothing else: A, B, C or D.")
INSTRUCTION_LOCALIZATION = (
    "Respond with four numbers in this exact format and nothing else: [x, y, width, height] where "
    "x and y are the pixel coordinates of the top-left corner of the box, measured from the "
    "top-left corner of the WHOLE image described above, and width and height are the size of the "
    "box in pixels. Do not use fractions, percentages or normalised coordinates. Do not explain. "
    "Example: [1240, 88, 540, 410]")
INSTRUCTION_RELATIVE_POSITION = (
    "Answer with one of the four options exactly as written above, in lower case, and nothing "
    "else. Do not describe the boxes, do not explain your reasoning, do not restate the question. "
    "For example, if the answer is the option bottom-left, reply: bottom-left")
INSTRUCTION_VIEWPOINT = (
    "Answer with the direction the animal is facing, relative to the camera. Choose exactly one "
    "of these accepted answers: front, back, left, right, frontleft, frontright, backleft, "
    "backright, up, down. Reply with one of those options, written exactly as above in lower "
    "case, and nothing else. No explanation, no punctuation. For example, if the animal faces "
    "away from the camera and to the left, reply: backleft")
INSTRUCTION_OCR = (
    "Read the printed characters underneath the barcode. The code is always the letter A followed "
    "by eleven digits, twelve characters in total, with no spaces or punctuation. Transcribe "
    "exactly what is printed. Do not guess a plausible code and do not correct what you see. "
    "Respond with the twelve-character code and nothing else. Example: A00000012345")


def prompt(frame: str | None, question: str) -> str:
    """The item's ``question``: the frame (when the task has one), a newline, the question."""
    return f"{frame}\n{question}" if frame else question
